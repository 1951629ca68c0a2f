$OOMDOC triage tests/data/messages/real/001_torch03_thcstorage_vqa.txt
