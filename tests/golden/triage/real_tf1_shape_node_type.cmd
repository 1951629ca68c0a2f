$OOMDOC triage tests/data/messages/tf1_shape_node_type.txt # zhengyang-wang/Deeplab-v2--ResNet-101--Tensorflow#22
