$OOMDOC triage tests/data/messages/real/080_cupy_grouped_digits_chainer7.txt
