"""Small shared algorithms (glob matching, …) used by several command families."""
