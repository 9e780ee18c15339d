"""Paddle's fleet DataGenerator: a user's generate_sample turns each raw line into
[(slot name, [feasign, ...]), ...]; generate_batch may rework a batch of those; _gen_str
writes each sample in the MultiSlot text format a dataset's pipe_command produces:
for every slot, its element count then the elements, all space-separated, one sample a line.

    class MyData(MultiSlotDataGenerator):
        def generate_sample(self, line):
            def it():
                yield [("words", [int(w) for w in line.split()]), ("label", [1])]
            return it
    MyData().run_from_stdin()     # "3 1 2 3 1 1\n" for the line "1 2 3"
"""
import sys

__all__ = []


class DataGenerator:
    """Base class: override generate_sample (and optionally generate_batch); the
    subclasses MultiSlotDataGenerator / MultiSlotStringDataGenerator say how a sample is written."""

    def __init__(self):
        self._proto_info = None
        self.batch_size_ = 32

    def set_batch(self, batch_size):
        """How many samples generate_batch receives at a time."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"DataGenerator.set_batch: batch_size must be a positive int, got {batch_size!r}")
        self.batch_size_ = batch_size

    def _run(self, lines, out):
        batch = []

        def flush():
            for sample in self.generate_batch(batch)():
                out.write(self._gen_str(sample))
            batch.clear()

        for line in lines:
            for sample in self.generate_sample(line)():
                if sample is None:
                    continue
                batch.append(sample)
                if len(batch) == self.batch_size_:
                    flush()
        if batch:
            flush()

    def run_from_memory(self):
        """Writes the samples of generate_sample(None) to stdout (debugging, benchmarks)."""
        self._run([None], sys.stdout)

    def run_from_stdin(self):
        """Reads raw lines from stdin and writes the formatted samples to stdout: the body of a
        dataset's pipe_command."""
        self._run(sys.stdin, sys.stdout)

    def _gen_str(self, line):
        raise NotImplementedError("DataGenerator._gen_str: use MultiSlotDataGenerator or "
                                  "MultiSlotStringDataGenerator, which define the output format")

    def generate_sample(self, line):
        """Override: return a generator function yielding [(name, [feasign, ...]), ...]."""
        raise NotImplementedError("DataGenerator.generate_sample: override it to return a generator "
                                  "function yielding [(name, [feasign, ...]), ...]")

    def generate_batch(self, samples):
        """Override to rework a batch of samples; by default yields them unchanged."""
        def local_iter():
            yield from samples
        return local_iter


def _slots(cls, line):
    if isinstance(line, zip):
        line = list(line)
    if not isinstance(line, (list, tuple)):
        raise ValueError(f"{cls}: a sample must be a list or tuple of (name, elements) pairs, "
                         f"got {type(line).__name__}")
    for item in line:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(f"{cls}: each slot must be a (name, elements) pair, got {item!r}")
    return line


class MultiSlotStringDataGenerator(DataGenerator):
    """Writes string feasigns as they are: "count e1 e2 ..." per slot."""

    def _gen_str(self, line):
        parts = []
        for name, elements in _slots("MultiSlotStringDataGenerator", line):
            parts.append(" ".join([str(len(elements)), *elements]))
        return " ".join(parts) + "\n"


class MultiSlotDataGenerator(DataGenerator):
    """Writes int/float feasigns; the first sample fixes the slot names and order, and a slot
    becomes "float" (else "uint64") once a float appears in it (_proto_info)."""

    def _gen_str(self, line):
        cls = "MultiSlotDataGenerator"
        line = _slots(cls, line)
        first = self._proto_info is None
        info = [] if first else list(self._proto_info)  # committed once the sample is valid
        if not first and len(line) != len(info):
            raise ValueError(f"{cls}: a sample has {len(line)} slots, the first had "
                             f"{len(info)} ({[n for n, _ in info]})")
        parts = []
        for index, (name, elements) in enumerate(line):
            if not isinstance(name, str):
                raise ValueError(f"{cls}: slot name must be a str, got {name!r}")
            if not isinstance(elements, list):
                raise ValueError(f"{cls}: slot {name!r}: elements must be a list, got {type(elements).__name__}")
            if not elements:
                raise ValueError(f"{cls}: slot {name!r} is empty; pad it in generate_sample")
            if first:
                info.append((name, "uint64"))
            elif name != info[index][0]:
                raise ValueError(f"{cls}: slot {index} is named {name!r}, the first sample named it "
                                 f"{info[index][0]!r}")
            for elem in elements:
                if isinstance(elem, float):
                    info[index] = (name, "float")
                elif isinstance(elem, bool) or not isinstance(elem, int):
                    raise ValueError(f"{cls}: slot {name!r}: elements must be int or float, got {elem!r}")
            parts.append(" ".join(map(str, [len(elements), *elements])))
        self._proto_info = info
        return " ".join(parts) + "\n"
