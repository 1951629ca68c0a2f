$OOMDOC triage tests/data/messages/jax_after_bfc_warnings.txt # flatironinstitute/nemos#345
