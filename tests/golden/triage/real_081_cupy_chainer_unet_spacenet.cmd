$OOMDOC triage tests/data/messages/real/081_cupy_chainer_unet_spacenet.txt
