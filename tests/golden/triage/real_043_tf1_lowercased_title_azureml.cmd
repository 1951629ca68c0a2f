$OOMDOC triage tests/data/messages/real/043_tf1_lowercased_title_azureml.txt
