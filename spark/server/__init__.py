"""The subscription server: runners that claim subscriptions from the registry and deliver them."""
