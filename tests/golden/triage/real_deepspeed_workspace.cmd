$OOMDOC triage tests/data/messages/deepspeed_workspace.txt # JarodMica/ai-voice-cloning#24
