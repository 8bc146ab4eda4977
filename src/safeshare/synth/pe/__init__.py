"""synth/pe/: Private Evolution, DP synthetic data from a model's inference API (no training).

``PrivateEvolution`` runs the loop; ``DomainAPI`` and ``TabularEmbedder`` make it work on
tables without any model; ``WordAPI`` (public templates and word edits) and
``MiniLMEmbedder`` on text without a language model (``LLMTextAPI`` with one, through
an OpenAI-compatible server); ``LabelledEvolution`` runs one PE per
label on disjoint subsets with DP label counts.  :mod:`safeshare.synth.pe.accounting` does the
exact GDP accounting.  Nothing here imports torch until a text embedding is computed.
"""

from safeshare.errors import ModelAPIError
from safeshare.synth.pe.api import Embedder, RandomAPI, VariationAPI
from safeshare.synth.pe.evolution import IterationInfo, PrivateEvolution
from safeshare.synth.pe.labels import LabelledEvolution
from safeshare.synth.pe.openai_client import ChatClient, LLMTextAPI
from safeshare.synth.pe.population import Population
from safeshare.synth.pe.tabular import DomainAPI, TabularEmbedder
from safeshare.synth.pe.text import MiniLMEmbedder
from safeshare.synth.pe.words import Vocabulary, WordAPI

__all__ = [
    "ChatClient",
    "DomainAPI",
    "Embedder",
    "IterationInfo",
    "LLMTextAPI",
    "LabelledEvolution",
    "MiniLMEmbedder",
    "ModelAPIError",
    "Population",
    "PrivateEvolution",
    "RandomAPI",
    "TabularEmbedder",
    "VariationAPI",
    "Vocabulary",
    "WordAPI",
]
