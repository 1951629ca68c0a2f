$OOMDOC triage tests/data/messages/summary_repr_movie_lm.txt # davidwehrlin/movie-language-model README.md
