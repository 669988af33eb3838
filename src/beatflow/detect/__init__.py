"""Beat detection, the ``segment`` rule (:func:`beatflow.detect.segment.segment`).

From the bottom floor up: :mod:`.nms` / :mod:`.nms_cuda` (the NMS kernel), :mod:`.peaks` (peaks of an envelope,
windows around them), :mod:`.envelope` (wavelet responses in units of a typical beat), :mod:`.veto` (noise
peaks out), :mod:`.fusion` (two leads), :mod:`.searchback` (weak beats in long intervals), and
:mod:`.segment` (the detector and the stage)."""
