"""Export a plan or an estimate as the configs and launch lines of a framework (trainplan export)."""
