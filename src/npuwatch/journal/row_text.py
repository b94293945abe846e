"""The texts of the journal's rows — an event's document, a notable record's line — compressed
with a zstd dictionary that each segment trains on its own first rows of that kind.

These texts are short (a line of ~200 bytes, a document of ~1.5 KB) and each is read alone, so
the block codec does not fit them, and zstd without a dictionary only halves them. A dictionary
trained on the segment's first 512 rows of the kind takes the rest to 14 % (documents) and 28 %
(lines) of their size, and decodes one in about a microsecond
(docs/adr/0006-row-text-dictionaries.md has the measurements).

A stored text is either `str` — written before its segment had a dictionary of that kind, or by
an npuwatch older than this module — or `bytes`: a zstd frame that names its dictionary by id.
Readers take both, so an old segment reads as it is; a segment opened for writing compresses
its earlier rows in the transaction that stores its dictionary.

This module is imported on `grep`'s index plan, which is timed against `rg`: zstandard is
imported only when a compressed text is met.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, NamedTuple

from npuwatch.journal.damage import is_damage

if TYPE_CHECKING:
    import zstandard

SCHEMA = """
CREATE TABLE IF NOT EXISTS dictionaries (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    data BLOB NOT NULL
);
"""

TRAIN_AFTER_ROWS = 512
"""Rows of a kind a segment holds before it trains that kind's dictionary: fewer leave the
dictionary poorer (measured: 200 documents 15 %, 500 14 %, 1,000 13 % of the size)."""
_SAMPLE_ROWS = 2000
_DICTIONARY_BYTES = 64 * 1024
_LEVEL = 3
_LARGEST_TEXT_BYTES = 1 << 30
"""Far above any text a row holds (a line, an event's document); a size beyond it is damage."""


class _Column(NamedTuple):
    table: str
    column: str
    key: str


COLUMNS = {
    "events": _Column("events", "document", "seq"),
    "notable": _Column("notable", "original", "rowid"),
}
"""Each kind of row text: the table and column that hold it, and the table's row key."""


class RowTextError(ValueError):
    """A stored text that cannot be read back (a damaged frame, or a dictionary missing)."""


class RowTextDecoder:
    """Reads the row texts of one segment, however each was stored. Not shared between threads
    (a segment's connection is not either)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._decompressors: dict[int, zstandard.ZstdDecompressor] | None = None

    def decode(self, stored: str | bytes) -> str:
        if isinstance(stored, str):
            return stored
        if not isinstance(stored, bytes):  # damage SQLite does not see: a number, a NULL
            raise RowTextError(f"a stored text is {type(stored).__name__}, not text")
        import zstandard  # noqa: PLC0415  (see the module's docstring)

        try:
            parameters = zstandard.get_frame_parameters(stored)
            # A damaged frame header can claim any size; decompress would try to allocate it.
            size = parameters.content_size
            if _LARGEST_TEXT_BYTES < size != zstandard.CONTENTSIZE_UNKNOWN:
                raise RowTextError(f"a stored text claims {size} bytes uncompressed")
            decompressor = self._decompressor(parameters.dict_id)
            return decompressor.decompress(stored).decode("utf-8")
        except (zstandard.ZstdError, UnicodeDecodeError) as error:
            raise RowTextError(f"a stored text does not decode ({error})") from error

    def _decompressor(self, dictionary_id: int) -> zstandard.ZstdDecompressor:
        found = None if self._decompressors is None else self._decompressors.get(dictionary_id)
        if found is None:  # not read yet, or trained by the writer since
            self._decompressors = _decompressors(self._db)
            found = self._decompressors.get(dictionary_id)
        if found is None:
            raise RowTextError(
                f"a stored text names dictionary {dictionary_id}, which its segment does not hold"
            )
        return found


def _decompressors(db: sqlite3.Connection) -> dict[int, zstandard.ZstdDecompressor]:
    import zstandard  # noqa: PLC0415

    try:
        rows = db.execute("SELECT id, data FROM dictionaries").fetchall()
    except sqlite3.DatabaseError as error:
        if isinstance(error, sqlite3.OperationalError) and "no such table" in str(error):
            return {}  # a segment older than this module
        if not is_damage(error):
            raise
        raise RowTextError(f"the segment's dictionaries cannot be read ({error})") from error
    try:
        return {
            int(id_): zstandard.ZstdDecompressor(
                dict_data=zstandard.ZstdCompressionDict(bytes(data))
            )
            for id_, data in rows
        }
    except (zstandard.ZstdError, TypeError, ValueError) as error:
        raise RowTextError(f"the segment's dictionaries cannot be read ({error})") from error


class RowTextEncoder:
    """Compresses the row texts a writing segment stores, once it has trained the dictionary of
    their kind. Used inside the segment's write transaction, by its one writing thread."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._compressors: dict[str, zstandard.ZstdCompressor] = {}
        self._next_attempt = dict.fromkeys(COLUMNS, TRAIN_AFTER_ROWS)
        rows = db.execute("SELECT kind, data FROM dictionaries ORDER BY id").fetchall()
        for kind, data in rows:
            self._compressors[str(kind)] = _compressor(bytes(data))

    def encode(self, kind: str, text: str) -> str | bytes:
        compressor = self._compressors.get(kind)
        return text if compressor is None else compressor.compress(text.encode("utf-8"))

    def untrained(self, kind: str) -> bool:
        """Whether the segment has no dictionary of `kind` yet."""
        return kind not in self._compressors

    def train_when_due(self, kind: str, rows: int) -> None:
        """Train `kind`'s dictionary when the segment holds `rows` rows of it and has none yet,
        and compress the rows stored before it. Call inside the write transaction."""
        if not self.untrained(kind) or rows < self._next_attempt[kind]:
            return
        import zstandard  # noqa: PLC0415

        where = COLUMNS[kind]
        samples = [
            text.encode("utf-8")
            for (text,) in self._db.execute(
                f"SELECT {where.column} FROM {where.table} WHERE typeof({where.column}) = 'text' "
                f"ORDER BY {where.key} LIMIT {_SAMPLE_ROWS}"
            )
        ]
        try:
            dictionary = zstandard.train_dictionary(_DICTIONARY_BYTES, samples, threads=1)
        except zstandard.ZstdError:  # samples too few or too alike: try again with more
            self._next_attempt[kind] = rows * 2
            return
        self._db.execute(
            "INSERT INTO dictionaries (id, kind, data) VALUES (?, ?, ?)",
            (dictionary.dict_id(), kind, dictionary.as_bytes()),
        )
        compressor = self._compressors[kind] = _compressor(dictionary.as_bytes())
        earlier = self._db.execute(
            f"SELECT {where.key}, {where.column} FROM {where.table} "
            f"WHERE typeof({where.column}) = 'text'"
        ).fetchall()
        self._db.executemany(
            f"UPDATE {where.table} SET {where.column} = ? WHERE {where.key} = ?",
            [(compressor.compress(str(text).encode("utf-8")), key) for key, text in earlier],
        )


def _compressor(dictionary: bytes) -> zstandard.ZstdCompressor:
    import zstandard  # noqa: PLC0415

    # The checksum (4 bytes) makes a text damaged on disk fail to decode, not decode wrong.
    return zstandard.ZstdCompressor(
        level=_LEVEL, dict_data=zstandard.ZstdCompressionDict(dictionary), write_checksum=True
    )
