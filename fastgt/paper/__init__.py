"""What is specific to the paper (Koloskova, Lin, Stich, NeurIPS 2021): its Table 3
(table3) and the report of its figures and slopes (report)."""
