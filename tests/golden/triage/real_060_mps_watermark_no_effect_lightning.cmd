$OOMDOC triage tests/data/messages/real/060_mps_watermark_no_effect_lightning.txt
