"""Submodules of oar.nn.functional (a module, given this folder as its __path__ so that Paddle's
`paddle.nn.functional.<submodule>` paths import): flash_attention."""
