$OOMDOC triage tests/data/messages/real/150_paddleocr_gunicorn_13_workers_gpu0.txt
