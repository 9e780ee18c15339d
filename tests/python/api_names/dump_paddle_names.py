"""Prints Paddle's public names in the namespaces Oar mirrors (the reference list that
test_api_coverage.py::test_no_public_name_outside_paddle checks against). Needs paddle."""
import paddle

print(f"# Paddle {paddle.__version__}'s public names in the namespaces Oar mirrors, one per line as <space>.<name>")
print("# (space: oar = paddle.*, Tensor = paddle.Tensor.*, F = paddle.nn.functional.*, linalg = paddle.linalg.*).")
print(f"# Regenerate with Paddle installed: python tests/python/api_names/dump_paddle_names.py > "
      f"tests/python/api_names/paddle_{paddle.__version__}.txt")
for space, ns in (("oar", paddle), ("Tensor", paddle.Tensor), ("F", paddle.nn.functional),
                  ("linalg", paddle.linalg)):
    for n in sorted(dir(ns)):
        if not n.startswith("_"):
            print(f"{space}.{n}")
