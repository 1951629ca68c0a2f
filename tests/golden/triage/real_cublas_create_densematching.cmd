$OOMDOC triage tests/data/messages/cublas_create_densematching.txt # DeepMotionAIResearch/DenseMatchingBenchmark#20
