"""dp/: budgets, events, the accountant, exact noise, DP domain discovery and the ledger."""

from safeshare.dp.accountant import Accountant
from safeshare.dp.budget import PrivacyBudget, epsilon_from_rho, rho_from_epsilon
from safeshare.dp.discovery import DiscoveryPlan, Target, plan_discovery
from safeshare.dp.events import (
    ComposedEvent,
    ExponentialEvent,
    GaussianEvent,
    PrivacyEvent,
    ThresholdedGaussianEvent,
    ZCDPEvent,
)
from safeshare.dp.ledger import Ledger, LedgerStatus, default_ledger_path
from safeshare.dp.mechanisms import ExponentialMechanism, GaussianMechanism
from safeshare.dp.randomness import Randomness

__all__ = [
    "Accountant",
    "ComposedEvent",
    "DiscoveryPlan",
    "ExponentialEvent",
    "ExponentialMechanism",
    "GaussianEvent",
    "GaussianMechanism",
    "Ledger",
    "LedgerStatus",
    "PrivacyBudget",
    "PrivacyEvent",
    "Randomness",
    "Target",
    "ThresholdedGaussianEvent",
    "ZCDPEvent",
    "default_ledger_path",
    "epsilon_from_rho",
    "plan_discovery",
    "rho_from_epsilon",
]
