$OOMDOC triage tests/data/messages/torch_driver_oom_smi_gpus.txt # yangjianxin1/GPT2-chitchat#19
