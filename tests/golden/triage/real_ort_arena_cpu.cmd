$OOMDOC triage tests/data/messages/ort_arena_cpu.txt # DayBreak-u/chineseocr_lite#355
