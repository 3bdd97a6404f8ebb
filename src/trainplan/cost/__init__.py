"""Money: the price a job is billed at (prices.py, the edge that reads the catalog) and the bill
(bill.py, pure)."""
