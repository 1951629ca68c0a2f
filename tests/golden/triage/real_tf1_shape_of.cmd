$OOMDOC triage tests/data/messages/tf1_shape_of.txt # lc222/seq2seq_chatbot_new#19
