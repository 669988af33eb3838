"""beatflow's Adam against torch.optim.Adam, and a training process that never imports TorchDynamo."""

import subprocess
import sys

import pytest
import torch

from beatflow.learn.adam import Adam


@pytest.mark.parametrize("lr,betas", [(0.004, (0.9, 0.999)), (0.1, (0.5, 0.9))])
def test_matches_torch_adam(lr, betas):
    torch.manual_seed(0)
    ours, reference = (
        torch.nn.Sequential(torch.nn.Conv1d(2, 4, 5), torch.nn.GELU(), torch.nn.Flatten(), torch.nn.Linear(4 * 28, 3))
        for _ in range(2)
    )
    reference.load_state_dict(ours.state_dict())
    mine, theirs = Adam(ours.parameters(), lr, betas), torch.optim.Adam(reference.parameters(), lr, betas)
    x = torch.randn(16, 2, 32)
    for _ in range(25):
        for model, optimiser in ((ours, mine), (reference, theirs)):
            optimiser.zero_grad()
            (model(x) ** 2).sum().backward()
            optimiser.step()
    for a, b in zip(ours.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)  # float32 rounding, 25 steps
    assert float(mine.steps) == 25


def test_training_does_not_import_torchdynamo():
    """torch.optim imports TorchDynamo on first use (seconds per process); beatflow's training must not."""
    code = (
        "import sys, torch; from beatflow.learn.train import TrainParams, fit; "
        "fit(torch.randn(64, 2, 40), TrainParams.defaults(epochs=2, batch_size=16), torch.device('cpu')); "
        "print('torch._dynamo' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
