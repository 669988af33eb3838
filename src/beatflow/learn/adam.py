"""Adam for train: the update of ``torch.optim.Adam`` (no weight decay, no AMSGrad; tested against it).

Written here because constructing any ``torch.optim`` optimiser imports TorchDynamo, which costs a fresh
train process more than its training. All state lives on the parameters' device, the step count included, so
a step can be recorded in a CUDA graph.
"""

from __future__ import annotations


class Adam:
    """Adam with learning rate ``lr``, moment decays ``betas`` and ``eps`` in the denominator."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        import torch

        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.steps = torch.zeros((), device=self.params[0].device)
        self.mean = [torch.zeros_like(p) for p in self.params]
        self.square = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        """Drop the gradients (the next backward pass allocates them anew)."""
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """One update from the parameters' current gradients."""
        import torch

        with torch.no_grad():
            grads = [p.grad for p in self.params]
            self.steps += 1
            torch._foreach_lerp_(self.mean, grads, 1 - self.beta1)
            torch._foreach_mul_(self.square, self.beta2)
            torch._foreach_addcmul_(self.square, grads, grads, 1 - self.beta2)
            step_size = self.lr / (1 - self.beta1**self.steps)
            denominator = torch._foreach_sqrt(self.square)
            torch._foreach_div_(denominator, torch.sqrt(1 - self.beta2**self.steps))
            torch._foreach_add_(denominator, self.eps)
            update = torch._foreach_div(self.mean, denominator)
            torch._foreach_mul_(update, step_size)
            torch._foreach_sub_(self.params, update)
