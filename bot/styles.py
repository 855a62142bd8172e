"""What an element's inline style does to a reader: whether it hides what the element holds.

The bot's own replies are never judged by it (their elements may carry only
the styles the bot's own markup renders with: :mod:`bot.edit_check`); it
reads the page around a reply, which anyone may have written: whether an
element someone left open above the reply's place would hide it.

MediaWiki's sanitizer lets a page give any element a ``style`` attribute (it
decodes CSS escapes and drops comments and a few dangerous constructs, no
more), so the question is asked of the declarations as a browser reads
them: the last one of a property wins, names are case-insensitive, and a
value is a number with a unit.  "Hidden" covers near-zero values too
(``font-size:0.01px``, ``opacity:0.02``, ``height:1px`` with its overflow
cut), which a reader cannot see although they are not zero.
"""

from __future__ import annotations

import re

#: Sizes below this many CSS pixels cannot be read.
MIN_READABLE_PX = 6.0
#: Opacity below this cannot be seen against the page.
MIN_OPACITY = 0.2
#: A negative margin larger than this (in CSS pixels) moves content over the text around it.
MAX_OUTDENT_PX = 16.0
#: CSS pixels per unit, at MediaWiki's 16-pixel font and an ordinary window, for relative units.
_PX_PER_UNIT = {"": 16.0, "px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4,
                "q": 96 / 101.6, "em": 16.0, "rem": 16.0, "ex": 8.0, "ch": 8.0, "%": 0.16, "vw": 12.0, "vh": 9.0,
                "vmin": 9.0, "vmax": 12.0, "lh": 22.0, "rlh": 22.0, "cap": 11.0, "ic": 16.0}
_NUMBER = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([a-z%]*)$")
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?|\\(.)")
#: A colour no one can see: ``transparent``, or an alpha of zero.
_TRANSPARENT = re.compile(r"transparent|(?:rgb|hsl)a?\(.*[,/]\s*0*(?:\.0*)?%?\s*\)|#[0-9a-f]{3}0|#[0-9a-f]{6}00")
_SIZED = ("font-size", "height", "max-height", "width", "max-width", "line-height")


def declarations(style: str) -> dict[str, str]:
    """The declarations of an inline *style* as a browser applies them: property (lower case) to value, the last
    one of a property winning, comments and ``!important`` left out, CSS escapes decoded."""
    style = re.sub(r"/\*.*?(?:\*/|$)", " ", style, flags=re.DOTALL)
    style = _ESCAPE.sub(lambda found: chr(int(found.group(1), 16)) if found.group(1) else found.group(2), style)
    found: dict[str, str] = {}
    for declaration in style.split(";"):
        name, colon, value = declaration.partition(":")
        if colon:
            value = re.sub(r"!\s*important\s*$", "", value, flags=re.IGNORECASE)
            found[name.strip().lower()] = " ".join(value.lower().split())
    return found


def pixels(value: str) -> float | None:
    """A length (or a unitless number, as ``line-height`` takes it) in CSS pixels; ``None`` for anything else."""
    found = _NUMBER.match(value.strip())
    if found is None or found.group(2) not in _PX_PER_UNIT:
        return None
    return float(found.group(1)) * _PX_PER_UNIT[found.group(2)]


def _opacity(value: str) -> float | None:
    found = _NUMBER.match(value.strip())
    if found is None or found.group(2) not in ("", "%"):
        return None
    return float(found.group(1)) / (100 if found.group(2) == "%" else 1)


def _negative_margin(values: dict[str, str], limit: float) -> str | None:
    for name, value in values.items():
        if name.startswith("margin"):
            for part in value.split():
                size = pixels(part)
                if size is not None and size < -limit:
                    return f"{name}:{value}"
    return None


def hiding(style: str) -> str | None:
    """Why *style* keeps what the element holds from a reader (hidden, positioned away, near zero, cut off, moved
    over other text by a negative margin), in CSS; ``None`` when it does not."""
    values = declarations(style)
    if values.get("display") == "none":
        return "display:none"
    if values.get("visibility") in ("hidden", "collapse"):
        return f"visibility:{values['visibility']}"
    if values.get("position") in ("absolute", "fixed"):
        return f"position:{values['position']}"
    if (opacity := _opacity(values.get("opacity", "1"))) is not None and opacity < MIN_OPACITY:
        return f"opacity:{values['opacity']}"
    for name in _SIZED:
        size = pixels(values.get(name, ""))
        if size is not None and size < (MIN_READABLE_PX if name != "line-height" else MIN_READABLE_PX / 2):
            return f"{name}:{values[name]}"
    for name in ("clip", "clip-path", "mask", "mask-image", "transform", "scale", "filter"):
        if values.get(name, "none") not in ("none", "auto", ""):
            return f"{name}:{values[name]}"
    if _TRANSPARENT.fullmatch(values.get("color", "")):
        return f"color:{values['color']}"
    if values.get("position") in ("relative", "sticky"):
        for name in ("top", "right", "bottom", "left"):
            offset = pixels(values.get(name, "0"))
            if offset is not None and abs(offset) > MAX_OUTDENT_PX:
                return f"position:{values['position']};{name}:{values[name]}"
    indent = pixels(values.get("text-indent", "0"))
    if indent is not None and indent < -MAX_OUTDENT_PX:
        return f"text-indent:{values['text-indent']}"
    spacing = pixels(values.get("letter-spacing", "0"))
    if spacing is not None and spacing < -MIN_READABLE_PX / 2:
        return f"letter-spacing:{values['letter-spacing']}"
    return _negative_margin(values, MAX_OUTDENT_PX)
