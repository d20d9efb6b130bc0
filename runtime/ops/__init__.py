"""The op library: every op registered once in ``registry``; ``api`` is the public function set."""
