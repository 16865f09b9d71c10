"""Root-cause stories: the kinds of failure a diagnosis can tell, each with its own explanation.

A detector names the story it belongs to (``story = "collapse"``) and its role in it (``role = "outcome"``
for what the user sees — the reward cliff — or ``"mechanism"`` for what led there — the KL spike). A user
who registers a detector for a new kind of failure registers its story too::

    from rlcockpit.health.stories import Story, register_story

    register_story(Story("disk", "Checkpoint disk filling up", "the checkpoints filled the disk{because}"))

or sets ``story = Story(...)`` on the detector class directly; either way ``rlcockpit diagnose`` tells it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlcockpit.registry import Registry


@dataclass(frozen=True)
class Story:
    """``explain`` is one sentence with a ``{because}`` slot for the top config cause; ``config`` lists the
    config-cause ids (see :func:`rlcockpit.health.advice.config_causes`) that commonly lead to this story."""

    name: str
    title: str
    explain: str = "{because}"
    config: tuple[str, ...] = ()


STORIES: Registry[Story] = Registry("story")


def register_story(story: Story) -> Story:
    """Add ``story`` to ``STORIES`` (replacing one of the same name: re-registering in a notebook is fine)."""
    STORIES.add(story.name, story, override=True)
    return story


for _story in (
    Story("collapse", "Policy collapse",
          "the policy moved too far from the reference in one go{because}; its outputs degenerated and the "
          "reward collapsed", ("kl", "lr", "warmup", "clip", "epochs", "updates", "grad_clip",
                                "entropy_penalty", "temperature")),
    Story("hacking", "Reward hacking",
          "the reward kept rising while the outputs got worse{because}: the policy learned to exploit the "
          "reward function instead of solving the task", ("kl", "entropy_penalty", "entropy_coeff")),
    Story("entropy", "Entropy collapse",
          "the policy became nearly deterministic{because}; with identical samples per prompt the advantages "
          "vanish and learning stalls", ("entropy_penalty", "entropy_coeff", "temperature", "lr", "kl")),
    Story("divergence", "Optimisation diverged",
          "the optimiser took steps too large for the loss surface{because} and the loss blew up",
          ("lr", "warmup", "grad_clip")),
    Story("memory", "Out-of-memory risk", "memory use grew towards the device limit{because}", ("ckpt",)),
    Story("speed", "Training slowed down", "each training step takes longer than it did{because}"),
    Story("length", "Responses running to the length limit",
          "responses grew until the length limit cut them off{because}; truncated answers get no reward and "
          "bias the update"),
    Story("mismatch", "Rollout/trainer mismatch",
          "the rollout engine's log-probs no longer match the trainer's, so importance ratios are wrong{because}"),
    Story("other", "Training problem", "{because}"),
):
    register_story(_story)


def resolve_story(story: str | Story) -> Story:
    """The :class:`Story` a detector's ``story`` attribute names (an unknown name falls back to ``other``)."""
    if isinstance(story, Story):
        return story
    return STORIES.get(story) if story in STORIES else STORIES.get("other")
