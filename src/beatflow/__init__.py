"""beatflow: anomalous-heartbeat detection in long ECG recordings, on GPU or CPU.

Importing the package is cheap: no GPU library, torch or plotting stack is imported here.
"""

__version__ = "0.1.0"
