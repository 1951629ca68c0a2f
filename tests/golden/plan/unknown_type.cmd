echo '{"model_type": "xlnet", "d_model": 512}' | $OOMDOC plan --config -
