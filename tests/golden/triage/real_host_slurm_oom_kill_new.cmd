$OOMDOC triage tests/data/messages/host_slurm_oom_kill_new.txt # nextflow-io/nextflow#5932
