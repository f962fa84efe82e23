"""Deployment: images, and the local stack (`deploy/local`) with its client side."""
