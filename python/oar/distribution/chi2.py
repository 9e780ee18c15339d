"""Chi-squared distribution."""
from .distribution import _dtype_name, to_params
from .gamma import Gamma


class Chi2(Gamma):
    """Chi2(df): the distribution of a sum of df squared standard normals, i.e.
    Gamma(df / 2, 1 / 2); df > 0."""
    _owner = "Chi2"

    def __init__(self, df):
        (df,) = to_params("Chi2", df=df)
        super().__init__(0.5 * df, 0.5 + 0.0 * df)
        self._dtype = _dtype_name(df.dtype)

    @property
    def df(self):
        return 2.0 * self.concentration
