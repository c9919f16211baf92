"""What the router shows about itself: metrics, model events, the access log."""
