"""Reinforcement learning: a REINFORCE agent on cart-pole, as PyTorch's reinforce
example, with the environment simulated in torch next to the policy.

Mila's ``cart`` ran Gym's CartPole on the CPU, one environment at a time. Here the
classic-control equations are written in torch and batched: ``exp.replica_batch``
environments run side by side on the experiment's device, so that the benchmark
measures the agent (policy evaluations, sampling, the policy-gradient update) and
the simulation, not Gym and the Python that glues them.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.models.pytorch.workload_base import Batch, Workload


class CartPole:
    """``exp.replica_batch`` cart-pole environments with Gym's CartPole-v1 dynamics
    (Barto, Sutton and Anderson, 1983; explicit Euler, 50 Hz): a reward of 1 per
    step; an episode ends when the pole leans past 12 degrees, the cart leaves the
    +-2.4 track, or after 500 steps, and the environment starts a new one at once."""

    GRAVITY, CART_MASS, POLE_MASS, HALF_LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    ANGLE_LIMIT, TRACK_LIMIT, MAX_STEPS = 12 * 2 * math.pi / 360, 2.4, 500

    def __init__(self, state: torch.Tensor) -> None:
        self.state = state  # (B, 4): position, velocity, angle, angular velocity
        self.steps = torch.zeros(state.shape[0], device=state.device, dtype=torch.long)

    @staticmethod
    def initial_state(batch: int, device: torch.device) -> torch.Tensor:
        """Gym's start: every variable uniform in [-0.05, 0.05]."""
        return (torch.rand(batch, 4, device=device) - 0.5) * 0.1

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Push left (0) or right (1); the next observations and which episodes ended
        (their environments already restarted)."""
        x, x_dot, theta, theta_dot = self.state.unbind(1)
        force = torch.where(action == 1, self.FORCE, -self.FORCE)
        cos, sin = torch.cos(theta), torch.sin(theta)
        total = self.CART_MASS + self.POLE_MASS
        pole_moment = self.POLE_MASS * self.HALF_LENGTH
        temp = (force + pole_moment * theta_dot**2 * sin) / total
        theta_acc = (self.GRAVITY * sin - cos * temp) / (
            self.HALF_LENGTH * (4.0 / 3.0 - self.POLE_MASS * cos**2 / total)
        )
        x_acc = temp - pole_moment * theta_acc * cos / total
        state = torch.stack([
            x + self.TAU * x_dot, x_dot + self.TAU * x_acc,
            theta + self.TAU * theta_dot, theta_dot + self.TAU * theta_acc,
        ], dim=1)
        self.steps = self.steps + 1
        done = ((state[:, 0].abs() > self.TRACK_LIMIT) | (state[:, 2].abs() > self.ANGLE_LIMIT)
                | (self.steps >= self.MAX_STEPS))
        fresh = self.initial_state(state.shape[0], state.device)
        self.state = torch.where(done.unsqueeze(1), fresh, state)
        self.steps = self.steps.masked_fill(done, 0)
        return self.state, done


class Policy(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """The reinforce example's policy: 4 → 128 (dropout 0.6, ReLU) → 2 action logits;
    898 parameters."""

    def __init__(self, observations: int = 4, hidden: int = 128, actions: int = 2) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(observations, hidden), nn.Dropout(0.6), nn.ReLU(), nn.Linear(hidden, actions)
        )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        """Action logits ``(B, 2)`` for observations ``(B, 4)``."""
        return self.net(observations)


def cart(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The cart-pole policy: ``input_shape == (4,)`` observations, ``num_classes`` actions."""
    return Policy(observations=input_shape[0], actions=num_classes)


class CartPoleWorkload(Workload):
    """Training: a rollout of ``seq_len`` steps in every environment, sampling actions
    from the policy, then one REINFORCE update on the discounted returns (gamma
    0.99, cut at episode ends, normalised), as the example does per episode.
    Throughput counts environment steps: ``seq_len`` per environment and step.

    Inference: the policy's action probabilities for one observation per
    environment, one decision (one environment step) per sample.
    """

    GAMMA = 0.99

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env: CartPole | None = None

    def _rollout_length(self) -> int:
        return self.seq_len or self.info.seq_len or 1

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Start ``batch_size`` environments; the inputs are their first observations
        (no targets: the environment gives the rewards)."""
        self.env = CartPole(CartPole.initial_state(batch_size, device))
        return self.env.state, torch.zeros(batch_size, 0, device=device)

    def infer(self, model: Any, inputs: torch.Tensor) -> Any:
        """Action probabilities for the observations."""
        return F.softmax(model(inputs), dim=-1)

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Roll out from the environments' current state; the REINFORCE loss."""
        if self.env is None or self.env.state.shape[0] != inputs.shape[0]:
            self.env = CartPole(inputs)
        env = self.env
        observations = env.state
        log_probs, dones = [], []
        for _ in range(self._rollout_length()):
            log_p = F.log_softmax(model(observations).float(), dim=-1)
            # Two actions: a Bernoulli draw, which never waits for the device.
            action = (torch.rand_like(log_p[:, 1]) < log_p[:, 1].exp()).long()
            log_probs.append(log_p.gather(1, action.unsqueeze(1)).squeeze(1))
            observations, done = env.step(action)
            dones.append(done)
        # Discounted returns of a reward of 1 per step, restarting where episodes end;
        # the rollout is cut, not bootstrapped, after its last step.
        running = torch.zeros_like(log_probs[0])
        returns = []
        for done in reversed(dones):
            running = 1.0 + self.GAMMA * running * (~done)
            returns.append(running)
        stacked = torch.stack(returns[::-1])
        advantages = (stacked - stacked.mean()) / (stacked.std(unbiased=False) + 1e-6)
        return -(torch.stack(log_probs) * advantages).sum(0).mean()

    def throughput_unit(self, training: bool) -> tuple[str, float]:
        """Environment steps."""
        return "steps/s", float(self._rollout_length()) if training else 1.0
