$OOMDOC triage tests/data/messages/host_pinned_tf.txt # gaycodegal/craiyon-low-vram-easy#1
