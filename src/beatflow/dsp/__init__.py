"""Signal processing shared by detection and embedding: FFT convolution in bounded memory (:mod:`.convolve`),
FIR band-pass (:mod:`.filters`) and the Ricker wavelet (:mod:`.wavelet`), on numpy or cupy."""
