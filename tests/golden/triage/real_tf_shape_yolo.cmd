$OOMDOC triage tests/data/messages/tf_shape_yolo.txt # miemie2013/Keras-YOLOv4#39
