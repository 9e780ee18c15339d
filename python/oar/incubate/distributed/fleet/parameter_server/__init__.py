"""Parameter-server placement (ir.ps_dispatcher) and the PSLib fleet of one trainer."""
