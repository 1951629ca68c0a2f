$OOMDOC watch python train.py
