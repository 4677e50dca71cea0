"""Reproduction of DelTA: Discriminative Token Credit Assignment for RLVR (arXiv 2605.21467), built on TRL"""

__version__ = "0.1.0"
