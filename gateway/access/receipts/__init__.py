"""The savings receipt: per request, the GPU time a variant used and what standard would have
used (receipt.py), summed per key and tenant for a period (savings.py)."""
