"""Where steps run: the Step/Runner interface, the host and container runners, the engine, images, environments, doctor."""
