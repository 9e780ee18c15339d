"""paddle.text: Viterbi decoding of tag sequences. Loaded on first use (`oar.text`). Paddle's
text datasets (Conll05st, Imdb, Imikolov, Movielens, UCIHousing, WMT14, WMT16) download their
corpora from Baidu's servers and are not provided."""
from .viterbi_decode import ViterbiDecoder, viterbi_decode

__all__ = ["ViterbiDecoder", "viterbi_decode"]
