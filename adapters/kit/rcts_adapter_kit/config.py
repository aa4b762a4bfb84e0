"""Reading a resolved rcts config the strict way: an adapter declares every config key it
models and which values it can run; any other key, or a value it cannot run, refuses the
case with the reason (the case is skipped, never run as something else).

    SPEC = {
        "model.hidden_size": READ,                               # modelled for any value
        "model.fp8": only(None, why="FP8 is not modelled"),     # modelled for these values
        "model.kv_lora_rank": inert_unless("model.multi_latent_attention", True),
    }
    why = refusal(cfg, SPEC)   # None when the adapter models every key of cfg

A key rcts adds later is refused until the adapter names it (the test of the rule)."""

READ = ("read",)


class only:
    """The key is modelled for these values only; any other value refuses the case."""

    def __init__(self, *values, why=None):
        self.values, self.why = values, why

    def refuse(self, key, value, cfg):
        if any(value == v and type(value) is type(v) for v in self.values):
            return None
        allowed = ", ".join(repr(v) for v in self.values)
        return f"{key} = {value!r}: " + (self.why or f"the adapter models only {allowed}")


class subset_of:
    """A list-valued key modelled when every element is one of `values`."""

    def __init__(self, values, why=None):
        self.values, self.why = set(values), why

    def refuse(self, key, value, cfg):
        if not isinstance(value, list):
            return f"{key} = {value!r}: not a list"
        extra = sorted(set(value) - self.values)
        if extra:
            return f"{key} = {value!r}: " + (self.why or f"{extra} not modelled (only {sorted(self.values)})")
        return None


class inert_unless:
    """The key has no effect unless `other` has value `when` (a value or a predicate); then
    `rule` (default: refuse) judges it. E.g. MLA sizes while multi_latent_attention is false."""

    def __init__(self, other, when, rule=None, why=None):
        self.other, self.when, self.rule, self.why = other, when, rule, why

    def refuse(self, key, value, cfg):
        on = lookup(cfg, self.other)
        on = self.when(on) if callable(self.when) else on == self.when
        if on and self.rule is not None:
            return None if self.rule is READ else self.rule.refuse(key, value, cfg)
        if on:
            return f"{key} = {value!r}: " + (self.why or f"not modelled when {self.other} = {lookup(cfg, self.other)!r}")
        return None


def lookup(cfg, dotted):
    v = cfg
    for part in dotted.split("."):
        v = v[part]
    return v


def flatten(cfg, prefix=""):
    """{"model.hidden_size": 16, ...}: the leaves of the config's sections."""
    out = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def refusal(cfg, spec):
    """Why the adapter cannot run `cfg`: the first key (in sorted order) it does not read or
    whose value it does not model, the switches before the keys they make inert (so
    num_moe_experts = 4 is the reason, not a MoE size); None when it models them all."""
    leaves = sorted(flatten(cfg).items())
    for key, value in leaves:
        if key not in spec:
            return f"config key {key} (= {value!r}) is not read by the adapter"
    for inert in (False, True):
        for key, value in leaves:
            rule = spec[key]
            if rule is READ or isinstance(rule, inert_unless) != inert:
                continue
            why = rule.refuse(key, value, cfg)
            if why:
                return why
    return None
