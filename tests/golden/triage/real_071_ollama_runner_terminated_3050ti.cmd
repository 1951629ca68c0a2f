$OOMDOC triage tests/data/messages/real/071_ollama_runner_terminated_3050ti.txt
