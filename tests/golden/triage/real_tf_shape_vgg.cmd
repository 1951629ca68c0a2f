$OOMDOC triage tests/data/messages/tf_shape_vgg.txt # dBeker/Faster-RCNN-TensorFlow-Python3#110
