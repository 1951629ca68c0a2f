$OOMDOC triage tests/data/messages/tf_shape_op_requires.txt # lllyasviel/style2paints#76
