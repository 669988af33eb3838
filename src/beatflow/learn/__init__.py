"""The convolutional VAE and its training, the ``train`` rule (:func:`beatflow.learn.train.train`): the model
(:mod:`.model`), the optimiser (:mod:`.adam`) and the time-stretch augmentation (:mod:`.augment`)."""
