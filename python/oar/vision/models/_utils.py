def no_pretrained(name, pretrained):
    if pretrained:
        raise ValueError(
            f"{name}: pretrained weights are not available (no downloads); load a "
            "checkpoint with oar.load and set_state_dict instead"
        )
