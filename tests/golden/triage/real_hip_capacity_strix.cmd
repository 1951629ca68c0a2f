$OOMDOC triage tests/data/messages/hip_capacity_strix.txt # kyuz0/amd-strix-halo-image-video-toolboxes#3
