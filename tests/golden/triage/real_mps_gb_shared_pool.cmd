$OOMDOC triage tests/data/messages/mps_gb_shared_pool.txt # pinokiocomputer/pinokio#941
