"""A small synthetic story corpus that the project generates itself, for offline demos and tests.

Not TinyStories: simple templated children's stories drawn from a fixed seed, so every machine builds
the same text without a download. They are easy to start on (a small vocabulary, fixed sentence frames)
but not trivial to finish: a name, friend, colour and object chosen early must be copied later in the
story, and some stories add two small numbers, so a model keeps improving after it has learned the
spelling. About 10,000 stories, 3.7 MB of text.
"""

from __future__ import annotations

import random

__all__ = ["N_STORIES", "SEED", "stories"]

N_STORIES = 10_000
SEED = 20260101

# name -> subject pronoun
NAMES = {
    "Lily": "she", "Tom": "he", "Mia": "she", "Ben": "he", "Sue": "she", "Max": "he", "Anna": "she",
    "Sam": "he", "Lucy": "she", "Tim": "he", "Ella": "she", "Jack": "he", "Zoe": "she", "Leo": "he",
    "Ruby": "she", "Finn": "he", "Rosa": "she", "Omar": "he", "Ivy": "she", "Noah": "he",
}  # fmt: skip
KINDS = ("girl", "boy", "cat", "dog", "bunny", "bird", "frog", "bear", "fox", "mouse", "duck", "owl")
ADJECTIVES = ("little", "happy", "curious", "brave", "shy", "kind", "silly", "small", "clever", "sleepy")
PLACES = ("a small house", "a big forest", "a quiet village", "a sunny farm", "a tall tree", "a cozy den",
          "a busy town", "a green valley")  # fmt: skip
FAMILY = ("mom", "dad", "grandma", "grandpa", "family", "big sister")
LIKES = ("play in the park", "sing songs", "draw pictures", "run in the grass", "look at the stars",
         "build with blocks", "jump in puddles", "read books", "dance in the rain", "help {pos} {family}")  # fmt: skip
COLOURS = ("red", "blue", "green", "yellow", "purple", "shiny", "golden", "tiny", "big", "soft")
OBJECTS = ("ball", "box", "key", "hat", "stone", "shell", "kite", "cup", "feather", "book", "bell", "leaf")
WHERE = ("under a bush", "near the river", "in the garden", "behind a rock", "on the path", "in the sand",
         "by the old tree", "inside a hole")  # fmt: skip
FEELINGS = ("happy", "surprised", "excited", "curious", "proud", "glad")
FRUIT = ("apples", "berries", "cookies", "plums", "nuts")
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
TROUBLES = (
    ("the {obj} fell into the water", "{a} and {b} used a long stick to get it back"),
    ("the wind took the {obj} up into a tree", "{a} climbed up and {b} held the branch"),
    ("a big dog wanted the {obj} too", "{a} and {b} shared it with the dog"),
    ("the {obj} was dirty", "{a} and {b} washed it in the pond"),
    ("the {obj} broke into two pieces", "{b} helped {a} fix it with glue"),
)
ENDINGS = (
    "From that day on, {a} kept the {obj} in a safe place.",
    "{a} and {b} played with the {obj} all day.",
    "{a} learned that sharing makes friends happy.",
    "That night, {a} went to sleep with a big smile.",
)


def _story(r: random.Random) -> str:
    name, pro = r.choice(list(NAMES.items()))
    friend = r.choice([n for n in NAMES if n != name])
    pos, obj_pro = ("her", "her") if pro == "she" else ("his", "him")
    family = r.choice(FAMILY)
    obj, colour = r.choice(OBJECTS), r.choice(COLOURS)
    adj, kind = r.choice(ADJECTIVES), r.choice(KINDS)
    opening = f"Once upon a time, there was a {adj} {kind} named {name}."
    if r.random() < 0.5:
        opening = f"There once was a {adj} {kind} called {name}."
    s = [
        opening,
        f"{name} lived in {r.choice(PLACES)} with {pos} {family}.",
    ]
    if r.random() < 0.7:
        s.append(f"{pro.capitalize()} loved to {r.choice(LIKES).format(pos=pos, family=family)}.")
    if r.random() < 0.4:
        n, m = r.randint(2, 5), r.randint(1, 5)  # n >= 2: "two apples", never "one apples"
        fruit = r.choice(FRUIT)
        s.append(
            f"{name} had {NUMBERS[n]} {fruit}. {pos.capitalize()} {family} gave {obj_pro} "
            f"{NUMBERS[m]} more. Now {name} had {NUMBERS[n + m]} {fruit}."
        )
    s += [
        f"One day, {name} found a {colour} {obj} {r.choice(WHERE)}.",
        f"{pro.capitalize()} was very {r.choice(FEELINGS)}.",
        f'{name} ran to {pos} friend {friend} and said, "Look, I found a {colour} {obj}!"',
    ]
    if r.random() < 0.6:
        trouble, fix = r.choice(TROUBLES)
        s.append(f"But then {trouble.format(obj=obj)}.")
        s.append(f"{fix.format(a=name, b=friend)}.")
    s.append(r.choice(ENDINGS).format(a=name, b=friend, obj=obj))
    return " ".join(s)


def stories(n: int = N_STORIES) -> list[str]:
    """The first `n` synthetic stories (at most N_STORIES); the same list on every machine and Python.

    `random.Random` with an integer seed is stable across Python versions, unlike numpy's Generator
    streams, which numpy may change between releases.
    """
    r = random.Random(SEED)
    return [_story(r) for _ in range(min(n, N_STORIES))]
