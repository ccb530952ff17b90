"""The discrete Fourier transform (``np.fft``): linear maps between real or complex arrays, whose
adjoints are transforms again (complex adjoints follow JAX's convention, see runtime/adjoints/fft.py)."""

import numpy as np

from . import rule

FFT = np.fft
_NONDIFF = {"norm": "a normalization name", "s": "a shape"}
_ONE = "y, a, n=None, axis=-1, norm=None"
_TWO = "y, a, s=None, axes=(-2, -1), norm=None"
_ALL = "y, a, s=None, axes=None, norm=None"

# ---- complex to complex: the transpose of a DFT is the same DFT ----------------------------------
rule(FFT.fft, _ONE, "d[a] += fft_adjoint(d[y], a, n, axis, norm, False)", nondiff=_NONDIFF)
rule(FFT.ifft, _ONE, "d[a] += fft_adjoint(d[y], a, n, axis, norm, True)", nondiff=_NONDIFF)
rule(FFT.fft2, _TWO, "d[a] += fft_adjoint(d[y], a, s, axes, norm, False)", nondiff=_NONDIFF)
rule(FFT.ifft2, _TWO, "d[a] += fft_adjoint(d[y], a, s, axes, norm, True)", nondiff=_NONDIFF)
rule(FFT.fftn, _ALL, "d[a] += fft_adjoint(d[y], a, s, axes, norm, False)", nondiff=_NONDIFF)
rule(FFT.ifftn, _ALL, "d[a] += fft_adjoint(d[y], a, s, axes, norm, True)", nondiff=_NONDIFF)

# ---- real to half spectrum and back ----------------------------------------------------------------
rule(FFT.rfft, _ONE, "d[a] += rfft_adjoint(d[y], a, n, axis, norm)", nondiff=_NONDIFF)
rule(FFT.rfft2, _TWO, "d[a] += rfft_adjoint(d[y], a, s, axes, norm)", nondiff=_NONDIFF)
rule(FFT.rfftn, _ALL, "d[a] += rfft_adjoint(d[y], a, s, axes, norm)", nondiff=_NONDIFF)
rule(FFT.irfft, _ONE, "d[a] += irfft_adjoint(d[y], a, n, axis, norm)", nondiff=_NONDIFF)
rule(FFT.irfft2, _TWO, "d[a] += irfft_adjoint(d[y], a, s, axes, norm)", nondiff=_NONDIFF)
rule(FFT.irfftn, _ALL, "d[a] += irfft_adjoint(d[y], a, s, axes, norm)", nondiff=_NONDIFF)

# ---- reordering ---------------------------------------------------------------------------------------
rule(FFT.fftshift, "y, x, axes=None", "d[x] += np.fft.ifftshift(d[y], axes)")
rule(FFT.ifftshift, "y, x, axes=None", "d[x] += np.fft.fftshift(d[y], axes)")
