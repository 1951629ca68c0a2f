$OOMDOC triage tests/data/messages/real/072_ollama_journal_l40s_deepseek.txt
