$OOMDOC triage tests/data/messages/real/177_triton_smem_prose_question_dest3d.txt
